import './base.css';
import './logs.css';
import './tree.css';
